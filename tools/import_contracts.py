"""Import-linter contracts that import-linter does not ship: no import cycle between modules, nor between packages.

``AcyclicModulesContract`` fails on any set of modules that import each other around a loop, lazy imports included
(an ``ignore_imports`` entry that matches nothing fails too); ``AcyclicPackagesContract`` does the same one
level up, each module counted as the child of its container. Configured in ``.importlinter``; docs/architecture.md."""

from __future__ import annotations

from typing import Any

import grimp
from importlinter.application import contract_utils, output
from importlinter.application.contract_utils import AlertLevel
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck


class AcyclicModulesContract(Contract):
    type_name = "acyclic"

    packages = fields.ListField(subfield=fields.StringField())
    ignore_imports = fields.SetField(subfield=fields.ImportExpressionField(), required=False)

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        removal = contract_utils.remove_ignored_imports_and_report(
            graph=graph,
            ignore_imports=self.ignore_imports,  # type: ignore[arg-type]
            unmatched_alerting=AlertLevel.ERROR,
        )
        modules: set[str] = set()
        for package in self.packages:  # type: ignore[attr-defined]
            modules |= {package, *graph.find_descendants(package)}
        imports = {
            module: sorted(graph.find_modules_directly_imported_by(module) & modules) for module in sorted(modules)
        }
        cycles = [_a_cycle(component, imports) for component in _components(imports) if len(component) > 1]
        return ContractCheck(
            kept=not cycles,
            warnings=list(removal.warnings),
            ignored_import_count=removal.ignored_import_count,
            metadata={"cycles": cycles},
        )

    def render_broken_contract(self, check: ContractCheck) -> None:
        for cycle in check.metadata["cycles"]:
            output.print_error("These modules import each other in a loop:")
            output.print_error("    " + " ->\n    ".join([*cycle, cycle[0]]))
            output.new_line()


class AcyclicPackagesContract(Contract):
    type_name = "acyclic_packages"

    containers = fields.ListField(subfield=fields.StringField())

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        containers: list[str] = list(self.containers)  # type: ignore[call-overload]
        units = {module: _unit(module, containers) for module in graph.modules}
        imports: dict[str, set[str]] = {unit: set() for unit in units.values() if unit}
        example: dict[tuple[str, str], str] = {}
        for module, unit in units.items():
            if not unit:
                continue
            for imported in graph.find_modules_directly_imported_by(module):
                target = units.get(imported)
                if target and target != unit:
                    imports[unit].add(target)
                    example.setdefault((unit, target), f"{module} -> {imported}")
        ordered = {unit: sorted(targets) for unit, targets in sorted(imports.items())}
        cycles = []
        for component in _components(ordered):
            if len(component) > 1:
                loop = _a_cycle(component, ordered)
                arrows = zip(loop, [*loop[1:], loop[0]], strict=True)
                cycles.append([f"{a} -> {b}  ({example[(a, b)]})" for a, b in arrows])
        return ContractCheck(kept=not cycles, warnings=[], metadata={"cycles": cycles})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for cycle in check.metadata["cycles"]:
            output.print_error("These packages import each other in a loop (one import of each arrow shown):")
            output.print_error("    " + "\n    ".join(cycle))
            output.new_line()


def _unit(module: str, containers: list[str]) -> str:
    """The child of the innermost container that holds ``module`` ('' outside every container)."""
    best = ""
    for container in containers:
        if module.startswith(container + ".") and len(container) > len(best):
            best = container
    if not best:
        return ""
    return best + "." + module[len(best) + 1 :].split(".", 1)[0]


def _components(imports: dict[str, list[str]]) -> list[list[str]]:
    """The strongly connected components of the graph (Tarjan's algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in imports:
        if root in index:
            continue
        work: list[tuple[str, Any]] = [(root, iter(imports[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(imports[child])))
                elif child in on_stack:
                    low[module] = min(low[module], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[module])
            if low[module] == index[module]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == module:
                        break
                components.append(sorted(component))
    return components


def _a_cycle(component: list[str], imports: dict[str, list[str]]) -> list[str]:
    """One loop through the component's first module, found breadth first (the shortest)."""
    members = set(component)
    start = component[0]
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for module in frontier:
            for child in imports[module]:
                if child == start:
                    path = [module]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return path[::-1]
                if child in members and child not in came_from:
                    came_from[child] = module
                    following.append(child)
        frontier = following
    return component
