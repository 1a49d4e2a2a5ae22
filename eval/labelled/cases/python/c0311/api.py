def set_status(cursor, user_id, status):
    sql = "UPDATE orders SET status = '" + status + "' WHERE user_id = " + str(user_id)
    cursor.execute(sql)
    return cursor.rowcount
