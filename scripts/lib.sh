# Shell helpers for the scripts in this folder; source it, do not run it.

# install_missing COMMAND:PACKAGES...
# Installs (apt-get, as root or through sudo) the Debian packages of every
# COMMAND that is not on PATH. PACKAGES may name several, separated by spaces.
install_missing() {
  local missing=() pair
  for pair in "$@"; do
    # shellcheck disable=SC2206 # PACKAGES is a space-separated list on purpose
    command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=(${pair#*:})
  done
  if [ ${#missing[@]} -eq 0 ]; then
    return 0
  fi
  echo "installing (apt-get): ${missing[*]}"
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      sudo=(sudo)
    else
      echo "error: need root or sudo to install ${missing[*]}" >&2
      return 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
