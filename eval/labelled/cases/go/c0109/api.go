package directory

import (
	"fmt"

	"github.com/go-ldap/ldap/v3"
)

func FindUser(conn *ldap.Conn, user string) (*ldap.SearchResult, error) {
	filter := fmt.Sprintf("(&(objectClass=user)(sAMAccountName=%s))", user)
	req := ldap.NewSearchRequest("dc=example,dc=com", ldap.ScopeWholeSubtree, ldap.NeverDerefAliases,
		0, 0, false, filter, []string{"dn", "cn"}, nil)
	return conn.Search(req)
}
