import ldap
from ldap.filter import filter_format


def groups_of(conn, member):
    return conn.search_s(
        "ou=groups,dc=example,dc=com",
        ldap.SCOPE_SUBTREE,
        filter_format("(member=%s)", [member]),
        ["cn"],
    )
