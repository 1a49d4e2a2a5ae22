import xml.etree.ElementTree as ET


def price(path, sku):
    root = ET.parse(path).getroot()
    for item in root.findall(".//item"):
        if item.get("sku") == sku:
            return item.findtext("price")
    return None
