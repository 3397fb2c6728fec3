// A franz-go kfake cluster as a server: one broker on the port given, until SIGTERM.
//
//	kfake-server PORT [KEY=VALUE ...]
//
// Each KEY=VALUE is a broker config kfake reads (kfake.BrokerConfigs: Kafka's names, such as
// group.min.session.timeout.ms or group.consumer.session.timeout.ms). The listening address is
// printed on stdout once the broker listens.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	if len(os.Args) < 2 {
		fail(2, "usage: kfake-server PORT [KEY=VALUE ...]")
	}
	port, err := strconv.Atoi(os.Args[1])
	if err != nil || port < 0 || port > 65535 {
		fail(2, fmt.Sprintf("kfake-server: PORT must be a number 0-65535, not %q", os.Args[1]))
	}
	configs := map[string]string{}
	for _, arg := range os.Args[2:] {
		key, value, ok := strings.Cut(arg, "=")
		if !ok || key == "" {
			fail(2, fmt.Sprintf("kfake-server: a setting is KEY=VALUE, not %q", arg))
		}
		configs[key] = value
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port), kfake.BrokerConfigs(configs))
	if err != nil {
		fail(1, fmt.Sprintf("kfake-server: %v", err))
	}
	defer c.Close()
	fmt.Println(c.ListenAddrs()[0])
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
}

func fail(code int, message string) {
	fmt.Fprintln(os.Stderr, message)
	os.Exit(code)
}
