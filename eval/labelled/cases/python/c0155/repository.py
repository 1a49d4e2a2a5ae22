import html

from django.http import HttpResponse


def search(request):
    query = html.escape(request.GET.get("q", ""))
    return HttpResponse(f"<b>You searched for: {query}</b>")
