from .directory import connection

DEFAULT_FILTER = "(&(objectClass=person)(!(accountLocked=TRUE)))"


def active_people():
    conn = connection()
    conn.search("ou=people,dc=example,dc=com", DEFAULT_FILTER, attributes=["uid"])
    return [e.uid.value for e in conn.entries]
