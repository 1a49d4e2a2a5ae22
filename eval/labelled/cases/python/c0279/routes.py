import sqlite3


def find_by_region(db_path, value):
    conn = sqlite3.connect(db_path)
    try:
        cur = conn.cursor()
        cur.execute("SELECT id, region FROM notes WHERE region = ?", (value,))
        return cur.fetchall()
    finally:
        conn.close()
