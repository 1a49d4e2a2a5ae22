from flask import request
from lxml import etree

from .data import catalog


def price():
    sku = request.args.get("sku", "")
    query = "//item[@sku='%s']/price/text()" % sku
    result = catalog().xpath(query)
    return result[0] if result else ""
