import sqlite3


def find_by_owner(db_path, value):
    conn = sqlite3.connect(db_path)
    try:
        cur = conn.cursor()
        cur.execute(f"SELECT id, owner FROM invoices WHERE owner = '{value}'")
        return cur.fetchall()
    finally:
        conn.close()
