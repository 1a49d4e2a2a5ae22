from ldap3 import Connection, SUBTREE
from ldap3.utils.conv import escape_filter_chars

BASE_DN = "ou=people,dc=example,dc=com"


def find_user(conn: Connection, username):
    conn.search(BASE_DN, f"(&(objectClass=person)(uid={escape_filter_chars(username)}))", SUBTREE, attributes=["cn"])
    return conn.entries
