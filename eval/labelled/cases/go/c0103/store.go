package store

import (
	"database/sql"
	"fmt"
)

const tableName = "accounts"

func NameOf(db *sql.DB, id int64) (string, error) {
	q := fmt.Sprintf("SELECT name FROM %s WHERE id = $1", tableName)
	var name string
	err := db.QueryRow(q, id).Scan(&name)
	return name, err
}
