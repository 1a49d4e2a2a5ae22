from django.http import JsonResponse

from .models import Comments


def by_slug(request):
    slug = request.GET.get("slug", "")
    rows = Comments.objects.raw(f"SELECT * FROM app_comments WHERE slug = '{slug}'")
    return JsonResponse({"ids": [r.id for r in rows]})
