package store

import (
	"database/sql"
	"strconv"
	"strings"
)

func Names(db *sql.DB, ids []int64) (*sql.Rows, error) {
	placeholders := make([]string, len(ids))
	args := make([]any, len(ids))
	for i, id := range ids {
		placeholders[i] = "$" + strconv.Itoa(i+1)
		args[i] = id
	}
	q := "SELECT name FROM notes WHERE id IN (" + strings.Join(placeholders, ",") + ")"
	return db.Query(q, args...)
}
