from lxml import etree

TREE = etree.parse("/srv/app/accounts.xml")


def account(account_id):
    nodes = TREE.xpath("//account[@id=$aid]", aid=account_id)
    return nodes[0] if nodes else None
