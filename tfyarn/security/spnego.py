"""SPNEGO ("Negotiate") for HTTP calls to a Kerberos cluster's web services.

A secure Hadoop cluster's web UIs and REST APIs (the ResourceManager's, its proxy to every
AppMaster, the NodeManagers', the NameNode's) answer 401 with ``WWW-Authenticate: Negotiate``
until the caller shows a Kerberos service ticket for ``HTTP/<host>``. The Python GSSAPI
binding has no Linux wheel (it builds against MIT's headers), so this asks MIT's own
libgssapi (installed with its clients, `krb5-user`) through ctypes, from the ticket cache
KRB5CCNAME names, as curl --negotiate and Chromium do. Only the first leg is made: Hadoop's
filter accepts it and sets its ``hadoop.auth`` cookie; the server's mutual-auth answer is not
checked (the connection's own TLS, where used, is what proves the server).
"""

from __future__ import annotations

import base64
import ctypes
import ctypes.util
import os
from functools import cache
from urllib.parse import urlsplit

import requests

from tfyarn.errors import TfyarnError

GSS_S_COMPLETE, GSS_S_CONTINUE_NEEDED = 0, 1
GSS_C_GSS_CODE, GSS_C_MECH_CODE = 1, 2
SPNEGO_OID = bytes([0x2B, 0x06, 0x01, 0x05, 0x05, 0x02])  # 1.3.6.1.5.5.2
LIBRARY = "libgssapi_krb5.so.2"


class SpnegoError(TfyarnError, requests.RequestException):
    """No Negotiate token could be made: no ticket, an unknown service, no library. A request
    that cannot log in has failed, so whoever handles failed requests handles this too."""


class _Buffer(ctypes.Structure):
    _fields_ = [("length", ctypes.c_size_t), ("value", ctypes.c_void_p)]


class _Oid(ctypes.Structure):
    _fields_ = [("length", ctypes.c_uint32), ("elements", ctypes.c_void_p)]


@cache
def _library() -> ctypes.CDLL:
    name = ctypes.util.find_library("gssapi_krb5") or LIBRARY
    try:
        return ctypes.CDLL(name)
    except OSError:
        raise SpnegoError(
            f"The server asks for Kerberos (SPNEGO) and MIT's {LIBRARY} is missing.",
            hint="install MIT Kerberos' clients (Debian: apt-get install krb5-user).") from None


def _status_text(lib: ctypes.CDLL, major: int, minor: int) -> str:
    """gss_display_status for the major code, then the mechanism's (the useful one)."""
    words = []
    for code, kind in ((major, GSS_C_GSS_CODE), (minor, GSS_C_MECH_CODE)):
        context, text, ignored = ctypes.c_uint32(0), _Buffer(), ctypes.c_uint32(0)
        while True:
            lib.gss_display_status(ctypes.byref(ignored), ctypes.c_uint32(code), kind, None,
                                   ctypes.byref(context), ctypes.byref(text))
            word = ctypes.string_at(text.value, text.length).decode(errors="replace")
            words.append(word.strip(" \x00"))
            lib.gss_release_buffer(ctypes.byref(ignored), ctypes.byref(text))
            if not context.value:
                break
    return ": ".join(word for word in words if word and word != "Unknown error")


def negotiate_token(host: str) -> str:
    """The base64 SPNEGO token for the service HTTP@host, from the user's ticket cache."""
    lib = _library()
    minor = ctypes.c_uint32(0)
    service = f"HTTP@{host}".encode()
    name_buffer = _Buffer(len(service), ctypes.cast(ctypes.c_char_p(service), ctypes.c_void_p))
    host_based = ctypes.c_void_p.in_dll(lib, "GSS_C_NT_HOSTBASED_SERVICE")
    name = ctypes.c_void_p()
    major = lib.gss_import_name(ctypes.byref(minor), ctypes.byref(name_buffer), host_based,
                                ctypes.byref(name))
    if major:
        raise SpnegoError(f"Kerberos cannot name the service HTTP@{host}: "
                          f"{_status_text(lib, major, minor.value)}")
    elements = ctypes.create_string_buffer(SPNEGO_OID, len(SPNEGO_OID))
    mechanism = _Oid(len(SPNEGO_OID), ctypes.cast(elements, ctypes.c_void_p))
    context, token = ctypes.c_void_p(), _Buffer()
    try:
        major = lib.gss_init_sec_context(
            ctypes.byref(minor), None, ctypes.byref(context), name, ctypes.byref(mechanism),
            0, 0, None, None, None, ctypes.byref(token), None, None)
        if major not in (GSS_S_COMPLETE, GSS_S_CONTINUE_NEEDED):
            cache = os.environ.get("KRB5CCNAME", "the default ticket cache")
            raise SpnegoError(
                f"The web server at {host} wants Kerberos (SPNEGO), and no ticket for "
                f"HTTP@{host} could be had from {cache}: {_status_text(lib, major, minor.value)}.",
                hint="run kinit (or `eval \"$(tfyarn cluster env)\"` on the local cluster).")
        return base64.b64encode(ctypes.string_at(token.value, token.length)).decode()
    finally:
        lib.gss_release_buffer(ctypes.byref(minor), ctypes.byref(token))
        lib.gss_delete_sec_context(ctypes.byref(minor), ctypes.byref(context), None)
        lib.gss_release_name(ctypes.byref(minor), ctypes.byref(name))


def _wants_negotiate(response: requests.Response) -> bool:
    offered = response.headers.get("WWW-Authenticate", "")
    return response.status_code == 401 and "negotiate" in offered.lower()


class Negotiate(requests.auth.AuthBase):
    """requests' auth for Kerberos web services: a 401 that offers Negotiate is answered once
    with a token for the URL's host; any other answer passes through untouched, so the same
    call works on a cluster without Kerberos at no cost."""

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.register_hook("response", self._answer_challenge)
        return request

    def _answer_challenge(self, response: requests.Response,
                          **send_options: object) -> requests.Response:
        if not _wants_negotiate(response) or "Authorization" in response.request.headers:
            return response
        host = urlsplit(response.url).hostname or ""
        retry = response.request.copy()
        retry.headers["Authorization"] = f"Negotiate {negotiate_token(host)}"
        response.content  # noqa: B018 -- read it all, so the connection can be reused
        response.close()
        answer = response.connection.send(retry, **send_options)
        answer.history.append(response)
        answer.request = retry
        return answer


def get(url: str, **options: object) -> requests.Response:
    """requests.get that answers a Kerberos web service's challenge."""
    return requests.get(url, auth=Negotiate(), **options)


def put(url: str, **options: object) -> requests.Response:
    """requests.put that answers a Kerberos web service's challenge."""
    return requests.put(url, auth=Negotiate(), **options)
