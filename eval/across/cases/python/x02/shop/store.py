import sqlite3


class OrderStore:
    def __init__(self, path):
        self.conn = sqlite3.connect(path)

    def orders_for(self, customer):
        cur = self.conn.cursor()
        cur.execute("SELECT id, total FROM orders WHERE customer = '" + customer + "'")
        return cur.fetchall()
