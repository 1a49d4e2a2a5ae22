package accounts

type Service struct {
	Store *Store
}

func (s *Service) Statement(user string) (map[string]int, error) {
	b, err := s.Store.Balance(user)
	if err != nil {
		return nil, err
	}
	return map[string]int{"balance": b}, nil
}
