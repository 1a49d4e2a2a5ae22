from django.http import JsonResponse


def issue_token(request, token):
    response = JsonResponse({"ok": True})
    response.set_cookie(
        "auth_token",
        token,
        secure=True,
        httponly=True,
        samesite="Strict",
    )
    return response
