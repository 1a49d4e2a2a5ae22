def lookup_email(conn, email):
    with conn.cursor() as cur:
        cur.execute(
            "SELECT id, email, created_at FROM shipments WHERE email = %s",
            (email,),
        )
        return cur.fetchone()
