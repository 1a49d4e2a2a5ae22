package store

import (
	"database/sql"
	"fmt"
)

func IDsByName(db *sql.DB, name string) ([]int64, error) {
	q := fmt.Sprintf("SELECT id FROM shipments WHERE name = '%s'", name)
	rows, err := db.Query(q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
