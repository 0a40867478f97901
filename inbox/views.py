"""Server-rendered pages. Placeholder bodies until the approver pages land (issue 3)."""

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse


@login_required
def item_list(request):
    return HttpResponse("inbox")


@login_required
def item_detail(request, pk: int):
    return HttpResponse(f"item {pk}")


@login_required
def run_detail(request, pk: int):
    return HttpResponse(f"run {pk}")


@login_required
def thread_detail(request, pk: int):
    return HttpResponse(f"thread {pk}")
