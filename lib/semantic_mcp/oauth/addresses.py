"""What an IP address really reaches, and which network it belongs to.

An IPv6 address can carry an IPv4 address that a gateway on the way connects to: NAT64
(``64:ff9b::/96``, and ``64:ff9b:1::/48`` for local use), 6to4 (``2002::/16``), IPv4-mapped and
IPv4-compatible (``::ffff:a.b.c.d``, ``::a.b.c.d``) and Teredo (its client address, inverted). Python's
``is_global`` looks at the IPv6 address only, and calls ``64:ff9b::7f00:1`` (loopback behind NAT64)
and ``2002:a9fe:a9fe::`` (the cloud metadata address behind 6to4) global. An address is public here
when it and every IPv4 address embedded in it are global.
"""

from __future__ import annotations

import ipaddress

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")


def embedded_ipv4(ip: IPAddress) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries for a gateway or a tunnel (none for IPv4)."""
    if isinstance(ip, ipaddress.IPv4Address):
        return []
    found = [ip.ipv4_mapped, ip.sixtofour, *(ip.teredo or ())]
    if any(ip in net for net in _NAT64) or ip in _IPV4_COMPATIBLE:
        found.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return [address for address in found if address is not None]


def is_public(address: str | IPAddress) -> bool:
    """Global, and so is every IPv4 address inside it (a NAT64 prefix to loopback is not)."""
    ip = ipaddress.ip_address(address.split("%")[0]) if isinstance(address, str) else address
    if any(ip in net for net in _NAT64[1:]):  # local-use NAT64 (RFC 8215) is not globally reachable
        return False
    return ip.is_global and all(inner.is_global for inner in embedded_ipv4(ip))


def network_of(address: str) -> str:
    """The network a quota counts an address in: its IPv4 /24, or its IPv6 /64 (one subscriber's
    usual allocation, so cycling through it buys nothing). An IPv4 address carried in an IPv6 one
    counts as that IPv4 address; anything unparseable counts as itself."""
    try:
        ip = ipaddress.ip_address(address.strip().split("%")[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    prefix = 24 if isinstance(ip, ipaddress.IPv4Address) else 64
    return str(ipaddress.ip_network(f"{ip}/{prefix}", strict=False))
