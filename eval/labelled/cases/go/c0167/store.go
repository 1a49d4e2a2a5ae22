package directory

import "github.com/go-ldap/ldap/v3"

const adminsFilter = "(&(objectClass=group)(cn=admins))"

func Admins(conn *ldap.Conn) (*ldap.SearchResult, error) {
	req := ldap.NewSearchRequest("ou=groups,dc=example,dc=com", ldap.ScopeWholeSubtree, ldap.NeverDerefAliases,
		0, 0, false, adminsFilter, []string{"member"}, nil)
	return conn.Search(req)
}
