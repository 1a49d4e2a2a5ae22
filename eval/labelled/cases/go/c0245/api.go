package store

import "database/sql"

func IDsByName(db *sql.DB, name string) ([]int64, error) {
	rows, err := db.Query("SELECT id FROM payments WHERE name = $1", name)
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
