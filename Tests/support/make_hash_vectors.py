#!/usr/bin/env python3
"""Writes Tests/HeraldActionsTests/Fixtures/imported-hash-vectors.json.

Each vector is one user as Firebase's accounts:batchCreate would receive it (the request's hash
fields, the user's passwordHash and salt) with the password that must verify against it. The hashes
come from implementations independent of Herald: Python's hashlib and hmac, the `bcrypt` package,
the `cryptography` package's AES-CTR, and vectors published by others (the firebase/scrypt README,
RFC 7914, a Firebase SHA1 import shown to work in a public write-up).

Run from the repository root (scripts/install-deps.sh installs bcrypt and cryptography):
`python3 Tests/support/make_hash_vectors.py`.
bcrypt salts are random, so bcrypt vectors change on every run; the others are fixed.
"""

import base64
import hashlib
import hmac
import json
import pathlib

import bcrypt
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

OUT = pathlib.Path(__file__).resolve().parent.parent / "HeraldActionsTests" / "Fixtures" / "imported-hash-vectors.json"


def b64url(data: bytes) -> str:
    """Unpadded base64url, what the REST API carries."""
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def b64(data: bytes) -> str:
    """Padded standard base64, which Herald accepts too (the firebase CLI's export files use it)."""
    return base64.b64encode(data).decode()


def firebase_scrypt(password: bytes, salt: bytes, separator: bytes, key: bytes, rounds: int, mem_cost: int) -> bytes:
    """The firebase/scrypt algorithm: AES-256-CTR (zero IV) of the signer key under scrypt's first 32 bytes."""
    derived = hashlib.scrypt(password, salt=salt + separator, n=1 << mem_cost, r=rounds, p=1, dklen=64, maxmem=1 << 30)
    encryptor = Cipher(algorithms.AES(derived[:32]), modes.CTR(bytes(16))).encryptor()
    return encryptor.update(key) + encryptor.finalize()


def ordered(password: bytes, salt: bytes, order: str | None) -> bytes:
    """Firebase's passwordHashOrder: salt first unless PASSWORD_AND_SALT."""
    return password + salt if order == "PASSWORD_AND_SALT" else salt + password


def iterated(name: str, data: bytes, rounds: int) -> bytes:
    """One hash of the salted password, then the digest hashed again until `rounds` hashes (0 counts as 1)."""
    digest = hashlib.new(name, data).digest()
    for _ in range(max(rounds, 1) - 1):
        digest = hashlib.new(name, digest).digest()
    return digest


def vector(name, password, parameters, password_hash, salt, source):
    entry = {"name": name, "password": password, "parameters": parameters, "passwordHash": password_hash, "source": source}
    if salt is not None:
        entry["salt"] = salt
    return entry


def main() -> None:
    vectors = []

    readme_key = "jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA=="
    readme = {"hashAlgorithm": "SCRYPT", "signerKey": readme_key, "saltSeparator": "Bw==", "rounds": 8, "memoryCost": 14}
    vectors.append(vector(
        "firebase scrypt, the firebase/scrypt README", "user1password", readme,
        "lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ==", "42xEC+ixf3L2lw==",
        "published: github.com/firebase/scrypt README"))
    key, separator, salt = bytes(range(1, 65)), b"\x07", b"herald-salt-1"
    vectors.append(vector(
        "firebase scrypt, small costs", "correct horse",
        {"hashAlgorithm": "SCRYPT", "signerKey": b64url(key), "saltSeparator": b64url(separator), "rounds": 2, "memoryCost": 8},
        b64url(firebase_scrypt(b"correct horse", salt, separator, key, 2, 8)), b64url(salt),
        "hashlib.scrypt + cryptography AES-CTR"))
    vectors.append(vector(
        "firebase scrypt, no salt separator", "pässwörd ✓",
        {"hashAlgorithm": "SCRYPT", "signerKey": b64url(key[:32]), "rounds": 1, "memoryCost": 4},
        b64url(firebase_scrypt("pässwörd ✓".encode(), salt, b"", key[:32], 1, 4)), b64url(salt),
        "hashlib.scrypt + cryptography AES-CTR"))

    rfc = hashlib.scrypt(b"password", salt=b"NaCl", n=1024, r=8, p=16, dklen=64)
    assert rfc.hex().startswith("fdbabe1c9d3472007856e7190d01e9fe"), "RFC 7914 section 12, second vector"
    vectors.append(vector(
        "standard scrypt, RFC 7914", "password",
        {"hashAlgorithm": "STANDARD_SCRYPT", "cpuMemCost": 1024, "blockSize": 8, "parallelization": 16, "dkLen": 64},
        b64url(rfc), b64url(b"NaCl"), "published: RFC 7914 section 12 (checked against hashlib.scrypt)"))
    small = hashlib.scrypt(b"correct horse", salt=salt, n=16, r=1, p=2, dklen=32)
    vectors.append(vector(
        "standard scrypt, small costs", "correct horse",
        {"hashAlgorithm": "STANDARD_SCRYPT", "cpuMemCost": 16, "blockSize": 1, "parallelization": 2, "dkLen": 32},
        b64(small), b64(salt), "hashlib.scrypt"))

    unsalted = hashlib.scrypt(b"correct horse", salt=b"", n=16, r=2, p=1, dklen=16)
    vectors.append(vector(
        "standard scrypt, no salt", "correct horse",
        {"hashAlgorithm": "STANDARD_SCRYPT", "cpuMemCost": 16, "blockSize": 2, "parallelization": 1, "dkLen": 16},
        b64url(unsalted), None, "hashlib.scrypt"))

    for prefix, cost, password in [(b"2b", 4, "correct horse"), (b"2a", 5, "pässwörd ✓"), (b"2b", 4, "x" * 72)]:
        hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=cost, prefix=prefix))
        vectors.append(vector(
            f"bcrypt ${prefix.decode()}$ cost {cost}, {len(password.encode())}-byte password", password, {"hashAlgorithm": "BCRYPT"}, b64url(hashed), None,
            "bcrypt (PyPI)"))
    hashed = bcrypt.hashpw(b"correct horse", bcrypt.gensalt(rounds=4)).replace(b"$2b$", b"$2y$", 1)
    vectors.append(vector(
        "bcrypt $2y$ (PHP's name for $2b$)", "correct horse", {"hashAlgorithm": "BCRYPT"}, b64(hashed), None,
        "bcrypt (PyPI), prefix renamed"))

    for algorithm, digest, rounds, length in [("PBKDF_SHA1", "sha1", 1000, 20), ("PBKDF2_SHA256", "sha256", 10000, 32),
                                              ("PBKDF2_SHA256", "sha256", 1, 64)]:
        derived = hashlib.pbkdf2_hmac(digest, b"correct horse", salt, rounds, length)
        vectors.append(vector(
            f"{algorithm} rounds {rounds} length {length}", "correct horse", {"hashAlgorithm": algorithm, "rounds": rounds},
            b64url(derived), b64url(salt), "hashlib.pbkdf2_hmac"))
    vectors.append(vector(
        "PBKDF2_SHA256 no salt", "correct horse", {"hashAlgorithm": "PBKDF2_SHA256", "rounds": 100},
        b64url(hashlib.pbkdf2_hmac("sha256", b"correct horse", b"", 100, 32)), None, "hashlib.pbkdf2_hmac"))
    vectors.append(vector(
        "PBKDF_SHA1 rounds 0 (read as 1)", "correct horse", {"hashAlgorithm": "PBKDF_SHA1", "rounds": 0},
        b64url(hashlib.pbkdf2_hmac("sha1", b"correct horse", salt, 1, 20)), b64url(salt),
        "hashlib.pbkdf2_hmac with 1 iteration: Herald's reading of rounds 0"))

    hmac_key = b"herald hmac signer key"
    for algorithm, digest in [("HMAC_SHA512", "sha512"), ("HMAC_SHA256", "sha256"), ("HMAC_SHA1", "sha1"), ("HMAC_MD5", "md5")]:
        for order in [None, "SALT_AND_PASSWORD", "PASSWORD_AND_SALT"]:
            parameters = {"hashAlgorithm": algorithm, "signerKey": b64url(hmac_key)}
            if order:
                parameters["passwordHashOrder"] = order
            mac = hmac.new(hmac_key, ordered(b"correct horse", salt, order), digest).digest()
            vectors.append(vector(
                f"{algorithm} {order or 'default order'}", "correct horse", parameters, b64url(mac), b64url(salt), "hmac"))

    for algorithm, digest in [("SHA512", "sha512"), ("SHA256", "sha256"), ("SHA1", "sha1"), ("MD5", "md5")]:
        for rounds, order in [(1, None), (1, "PASSWORD_AND_SALT"), (100, "SALT_AND_PASSWORD")]:
            parameters = {"hashAlgorithm": algorithm, "rounds": rounds}
            if order:
                parameters["passwordHashOrder"] = order
            hashed = iterated(digest, ordered(b"correct horse", salt, order), rounds)
            vectors.append(vector(
                f"{algorithm} rounds {rounds} {order or 'default order'}", "correct horse", parameters, b64url(hashed),
                b64url(salt), "hashlib"))
    vectors.append(vector(
        "MD5 rounds 0 (read as one hash)", "correct horse", {"hashAlgorithm": "MD5", "rounds": 0},
        b64url(hashlib.md5(salt + b"correct horse").digest()), b64url(salt), "hashlib: Herald's reading of rounds 0"))
    vectors.append(vector(
        "SHA1 PASSWORD_AND_SALT, a Firebase import shown to work", "Password1",
        {"hashAlgorithm": "SHA1", "rounds": 1, "passwordHashOrder": "PASSWORD_AND_SALT"},
        "kfjS+dtoePcY0vEKx1w5ol2ZJ88=", "WGl3aWloUT0=",
        "published: blog.salrashid.dev/articles/2020/firebase_import (firebase auth:import --hash-input-order=PASSWORD_FIRST)"))

    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(vectors, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {len(vectors)} vectors to {OUT}")


if __name__ == "__main__":
    main()
