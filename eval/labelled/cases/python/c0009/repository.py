from django.http import HttpResponse


def search(request):
    query = request.GET.get("q", "")
    return HttpResponse("<b>You searched for: %s</b>" % query)
