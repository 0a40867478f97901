"""Project tooling that is not part of the running application (see ``import_contracts``)."""
