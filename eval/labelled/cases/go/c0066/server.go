package store

import (
	"database/sql"
	"strconv"
)

func CountFor(db *sql.DB, ownerID int) (int, error) {
	var n int
	err := db.QueryRow("SELECT COUNT(*) FROM comments WHERE owner_id = " + strconv.Itoa(ownerID)).Scan(&n)
	return n, err
}
