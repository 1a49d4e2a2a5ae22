package deploy

func Release(ref string) error {
	if err := Checkout(ref); err != nil {
		return err
	}
	return nil
}
