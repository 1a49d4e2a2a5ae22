from ldap3 import Connection, SUBTREE

BASE_DN = "ou=people,dc=example,dc=com"


def find_user(conn: Connection, username):
    conn.search(BASE_DN, f"(&(objectClass=person)(uid={username}))", SUBTREE, attributes=["cn", "mail"])
    return conn.entries
