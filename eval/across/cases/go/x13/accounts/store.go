package accounts

import "database/sql"

type Store struct {
	DB *sql.DB
}

func (s *Store) Balance(user string) (int, error) {
	var total int
	row := s.DB.QueryRow("SELECT balance FROM accounts WHERE owner = '" + user + "'")
	err := row.Scan(&total)
	return total, err
}
