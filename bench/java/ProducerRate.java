// Kafka's own Java producer timing a spread produce, for bench/scale.py:
//   java ProducerRate <bootstrap> <topic> <partitions> <records>
// Sends <records> 100-byte values round-robin over partitions 0..<partitions>-1 with acks=1
// and linger.ms 5 (as the librdkafka case), waits for every acknowledgement, and prints
// "OK <records per second>". Unlike librdkafka, the Java producer puts the ready batches of
// every partition led by one broker into one Produce request.
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class ProducerRate {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        int partitions = Integer.parseInt(args[2]);
        int records = Integer.parseInt(args[3]);
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("acks", "1");
        props.put("linger.ms", "5");
        props.put("max.block.ms", "120000");
        props.put("delivery.timeout.ms", "300000");
        props.put("request.timeout.ms", "120000");
        props.put("key.serializer", ByteArraySerializer.class.getName());
        props.put("value.serializer", ByteArraySerializer.class.getName());
        byte[] value = new byte[100];
        AtomicLong failed = new AtomicLong();
        AtomicReference<Exception> firstError = new AtomicReference<>();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            // Connections and metadata first, outside the timing.
            producer.send(new ProducerRecord<>(topic, 0, null, value)).get();
            long began = System.nanoTime();
            for (int n = 0; n < records; n++) {
                producer.send(
                        new ProducerRecord<>(topic, n % partitions, null, value),
                        (metadata, error) -> {
                            if (error != null) {
                                failed.incrementAndGet();
                                firstError.compareAndSet(null, error);
                            }
                        });
            }
            producer.flush();
            double seconds = (System.nanoTime() - began) / 1e9;
            if (failed.get() > 0) {
                System.out.println("ERROR " + failed.get() + " records failed: " + firstError.get());
                System.exit(1);
            }
            System.out.println("OK " + (records / seconds));
        }
    }
}
