// Package provider lists the user-space drivers rdmactl has, as a static
// build of rdma-core names its providers (ibv_static_providers): each is
// a package here (rxe, mlx5), as rdma-core's providers/ are. A new one is
// a package and a line in All.
package provider

import (
	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/verbs/provider/mlx5"
	"github.com/rdmactl/rdmactl/internal/verbs/provider/rxe"
)

// All is every provider, in the order messages name them.
func All() verbs.Providers {
	return verbs.Providers{rxe.Provider{}, mlx5.Provider{}}
}
