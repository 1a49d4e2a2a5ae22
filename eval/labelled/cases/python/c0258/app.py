import logging

log = logging.getLogger(__name__)


def delete_named(conn, name):
    sql = "DELETE FROM employees WHERE name = '{}'".format(name)
    log.info("removing %s", name)
    with conn.cursor() as cur:
        cur.execute(sql)
    conn.commit()
