#!/usr/bin/env bash
# Test helper (sourced): a throw-away nginx on 127.0.0.1 serving a directory
# over HTTP and HTTPS with a self-signed certificate made here (CN and SAN
# 127.0.0.1 / localhost), no root needed: every path (pid, logs, temp
# dirs) is inside the work dir, `daemon off`, stopped by nginx_stop.
#
#   nginx_start WORK_DIR WWW_DIR [EXTRA_SERVER_DIRECTIVES]
#     sets NGINX_HTTP_PORT, NGINX_HTTPS_PORT, NGINX_CERT (the PEM to trust
#     with --ca-file), NGINX_ACCESS_LOG (lines "URI STATUS BODY_BYTES_SENT
#     CONNECTION CONNECTION_REQUESTS": nginx's connection serial number and
#     the request's number on it)
#   nginx_stop
#   make_cert DIR NAME SUBJECT_ALT_NAMES   -> DIR/NAME.pem, DIR/NAME.key
#   free_port                              -> prints a free TCP port

NGINX_BIN="${NGINX_BIN:-/usr/sbin/nginx}"
NGINX_PID=""

free_port() {
  /usr/bin/python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

make_cert() {  # make_cert DIR NAME SANS
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$1/$2.key" -out "$1/$2.pem" -days 2 -subj "/CN=$2" \
    -addext "subjectAltName=$3" >/dev/null 2>&1
}

nginx_start() {  # nginx_start WORK WWW [EXTRA]
  local work="$1" www="$2" extra="${3:-}"
  mkdir -p "${work}/nginx/tmp" "${work}/nginx/logs"
  make_cert "${work}/nginx" server "IP:127.0.0.1,DNS:localhost" || {
    echo "nginx_start: openssl req failed" >&2
    return 1
  }
  NGINX_CERT="${work}/nginx/server.pem"
  NGINX_ACCESS_LOG="${work}/nginx/logs/access.log"
  # As root nginx would hand its temp dirs to "nobody" (chown fails in a
  # sandbox): keep the running user (ignored with a warning otherwise).
  local user
  user="$(id -un 2>/dev/null || echo root) $(id -gn 2>/dev/null || echo root)"
  local attempt
  for attempt in 1 2 3 4 5; do
    NGINX_HTTP_PORT="$(free_port)"
    NGINX_HTTPS_PORT="$(free_port)"
    cat >"${work}/nginx/nginx.conf" <<CONF
daemon off;
master_process off;
user ${user};
worker_processes 1;
pid ${work}/nginx/nginx.pid;
error_log ${work}/nginx/logs/error.log warn;
events { worker_connections 128; }
http {
  log_format bytes '\$request_uri \$status \$body_bytes_sent \$connection \$connection_requests';
  access_log ${NGINX_ACCESS_LOG} bytes;
  client_body_temp_path ${work}/nginx/tmp/body;
  proxy_temp_path ${work}/nginx/tmp/proxy;
  fastcgi_temp_path ${work}/nginx/tmp/fastcgi;
  uwsgi_temp_path ${work}/nginx/tmp/uwsgi;
  scgi_temp_path ${work}/nginx/tmp/scgi;
  default_type application/octet-stream;
  sendfile on;
  server {
    listen 127.0.0.1:${NGINX_HTTP_PORT};
    listen 127.0.0.1:${NGINX_HTTPS_PORT} ssl;
    ssl_certificate ${NGINX_CERT};
    ssl_certificate_key ${work}/nginx/server.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    root ${www};
    ${extra}
  }
}
CONF
    "${NGINX_BIN}" -e "${work}/nginx/logs/error.log" -p "${work}/nginx" \
      -c "${work}/nginx/nginx.conf" &
    NGINX_PID=$!
    local i
    for i in $(seq 1 100); do
      if /usr/bin/python3 -c "import socket,sys
socket.create_connection(('127.0.0.1', ${NGINX_HTTPS_PORT}), 0.2).close()" \
        2>/dev/null; then
        return 0
      fi
      kill -0 "${NGINX_PID}" 2>/dev/null || break
      sleep 0.05
    done
    kill "${NGINX_PID}" 2>/dev/null
    wait "${NGINX_PID}" 2>/dev/null
    NGINX_PID=""
  done
  echo "nginx_start: nginx did not start:" >&2
  cat "${work}/nginx/logs/error.log" >&2
  return 1
}

nginx_stop() {
  if [[ -n "${NGINX_PID}" ]]; then
    kill "${NGINX_PID}" 2>/dev/null
    wait "${NGINX_PID}" 2>/dev/null
    NGINX_PID=""
  fi
}
