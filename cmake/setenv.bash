# bin/setenv.bash - CANN's other name for the environment script (ops-transformer's
# build.sh sources it): the same as sourcing <prefix>/set_env.sh, arguments
# (--torch-npu) included.
# shellcheck disable=SC1091
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/set_env.sh" "$@"
