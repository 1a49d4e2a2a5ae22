from Crypto.Cipher import DES
from Crypto.Util.Padding import pad


def encrypt(key, data):
    cipher = DES.new(key, DES.MODE_CBC)
    return cipher.iv + cipher.encrypt(pad(data, DES.block_size))
