from psycopg2 import sql


def rows_for(conn, table, owner):
    query = sql.SQL("SELECT id FROM {} WHERE owner = %s").format(sql.Identifier(table))
    with conn.cursor() as cur:
        cur.execute(query, (owner,))
        return [r[0] for r in cur.fetchall()]
