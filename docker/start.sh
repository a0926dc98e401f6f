#!/bin/sh
# Entrypoint behind HaRP (AppAPI's deploy daemon and proxy): when AppAPI deployed us through HaRP
# (HP_SHARED_KEY set), start an FRP client that tunnels HaRP's port for this app to our unix socket,
# then run the app. Without HaRP (a direct Docker daemon) only the app runs, on APP_HOST:APP_PORT.
# Our own short equivalent of HaRP's exapps_dev/start.sh (nextcloud/HaRP v0.4.4, AGPL-3.0-or-later),
# with the same frpc settings; one config, TLS only when HaRP installed its certificates.
set -eu

if [ -n "${HP_SHARED_KEY:-}" ]; then
    sock="${HP_EXAPP_SOCK:-/tmp/exapp.sock}"
    tls=false
    [ -d /certs/frp ] && tls=true
    {
        echo "serverAddr = \"$HP_FRP_ADDRESS\""
        echo "serverPort = $HP_FRP_PORT"
        echo "loginFailExit = false"   # HaRP may start after us: keep retrying
        echo "transport.tls.enable = $tls"
        if [ "$tls" = true ]; then
            echo 'transport.tls.certFile = "/certs/frp/client.crt"'
            echo 'transport.tls.keyFile = "/certs/frp/client.key"'
            echo 'transport.tls.trustedCaFile = "/certs/frp/ca.crt"'
            echo 'transport.tls.serverName = "harp.nc"'
        fi
        echo "metadatas.token = \"$HP_SHARED_KEY\""
        echo '[[proxies]]'
        echo "name = \"$APP_ID\""
        echo 'type = "tcp"'
        echo "remotePort = $APP_PORT"
        echo '[proxies.plugin]'
        echo 'type = "unix_domain_socket"'
        echo "unixPath = \"$sock\""
    } > /tmp/frpc.toml
    chmod 600 /tmp/frpc.toml   # holds the shared key
    frpc -c /tmp/frpc.toml &
fi

exec "$@"
