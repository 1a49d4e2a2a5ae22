def lookup_email(cur, email):
    query = f"""
        SELECT id, email, created_at
        FROM shipments
        WHERE email = '{email}'
    """
    cur.execute(query)
    return cur.fetchone()
