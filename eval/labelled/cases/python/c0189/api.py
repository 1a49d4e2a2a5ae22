import ldap


def groups_of(conn, member):
    return conn.search_s(
        "ou=groups,dc=example,dc=com",
        ldap.SCOPE_SUBTREE,
        "(member=%s)" % member,
        ["cn"],
    )
