from flask import request

from .directory import connection


def lookup():
    mail = request.args.get("mail", "")
    search_filter = "(mail=" + mail + ")"
    conn = connection()
    conn.search("dc=example,dc=com", search_filter, attributes=["uid"])
    return [e.uid.value for e in conn.entries]
