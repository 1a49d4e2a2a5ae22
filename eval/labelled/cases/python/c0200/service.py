TABLE = "invoices"


def get_row(cur, row_id):
    cur.execute(f"SELECT id, name FROM {TABLE} WHERE id = ?", (row_id,))
    return cur.fetchone()
