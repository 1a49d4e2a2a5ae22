package store

import (
	"database/sql"
	"strings"
)

func ByTags(db *sql.DB, tags []string) (*sql.Rows, error) {
	var b strings.Builder
	b.WriteString("SELECT id, title FROM orders WHERE tag IN (")
	for i, t := range tags {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("'" + t + "'")
	}
	b.WriteString(")")
	return db.Query(b.String())
}
