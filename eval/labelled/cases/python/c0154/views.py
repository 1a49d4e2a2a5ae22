import random


def shuffled_playlist(tracks):
    order = list(tracks)
    random.shuffle(order)
    return order
