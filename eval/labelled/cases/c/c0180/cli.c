#include <openssl/evp.h>

int seal(const unsigned char *key, const unsigned char *iv, const unsigned char *in, int len, unsigned char *out)
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int n = 0, total;

    if (ctx == NULL)
        return -1;
    EVP_EncryptInit_ex(ctx, EVP_des_ede3_cbc(), NULL, key, iv);
    EVP_EncryptUpdate(ctx, out, &n, in, len);
    total = n;
    EVP_EncryptFinal_ex(ctx, out + n, &n);
    EVP_CIPHER_CTX_free(ctx);
    return total + n;
}
