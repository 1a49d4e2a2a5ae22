package directory

import (
	"net/http"

	"github.com/go-ldap/ldap/v3"
)

func (s *Service) ByMail(w http.ResponseWriter, r *http.Request) {
	req := ldap.NewSearchRequest("ou=people,dc=example,dc=com", ldap.ScopeWholeSubtree, ldap.NeverDerefAliases,
		1, 0, false, "(mail="+r.URL.Query().Get("mail")+")", []string{"uid"}, nil)
	res, err := s.conn.Search(req)
	if err != nil || len(res.Entries) == 0 {
		http.NotFound(w, r)
		return
	}
	w.Write([]byte(res.Entries[0].GetAttributeValue("uid")))
}
