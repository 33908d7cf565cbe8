/*
 * Starts the Kroxylicious proxy runtime with a configuration file, as the distribution's
 * `kroxylicious-start.sh` does through its application module (which is not published to
 * Maven Central): parse the file, start the proxy, block until it stops.
 */
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;

import io.kroxylicious.proxy.KafkaProxy;
import io.kroxylicious.proxy.config.ConfigParser;
import io.kroxylicious.proxy.config.Configuration;
import io.kroxylicious.proxy.internal.config.Features;

public final class ProxyMain {
    private ProxyMain() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2 || !(args[0].equals("--config") || args[0].equals("-c"))) {
            System.err.println("usage: kroxylicious --config FILE");
            System.exit(2);
        }
        Path file = Path.of(args[1]);
        if (!Files.isRegularFile(file)) {
            System.err.println("configuration file " + file + " does not exist");
            System.exit(2);
        }
        ConfigParser parser = new ConfigParser();
        Configuration config;
        try (InputStream in = Files.newInputStream(file)) {
            config = parser.parseConfiguration(in);
        }
        try (KafkaProxy proxy = new KafkaProxy(parser, config, Features.defaultFeatures())) {
            proxy.startup();
            proxy.block();
        }
    }
}
