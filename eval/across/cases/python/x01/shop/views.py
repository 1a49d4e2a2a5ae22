from flask import Flask, request, jsonify

from .service import OrderService
from .store import OrderStore

app = Flask(__name__)
service = OrderService(OrderStore("shop.db"))


@app.route("/orders")
def orders():
    customer = request.args.get("customer", "")
    return jsonify(service.history(customer))
