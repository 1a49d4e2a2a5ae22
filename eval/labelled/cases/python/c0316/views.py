from lxml import etree

TREE = etree.parse("/srv/app/accounts.xml")


def account(account_id):
    nodes = TREE.xpath(f"//account[@id='{account_id}']")
    return nodes[0] if nodes else None
