from django.http import JsonResponse


def issue_token(request, token):
    response = JsonResponse({"ok": True})
    response.set_cookie("auth_token", token, httponly=True, samesite="Lax")
    return response
