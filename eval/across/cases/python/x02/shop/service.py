from .store import OrderStore


class OrderService:
    def __init__(self, store: OrderStore):
        self.store = store

    def history(self, customer):
        rows = self.store.orders_for(customer)
        return [{"id": r[0], "total": r[1]} for r in rows]
