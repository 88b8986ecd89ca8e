// Kafka's own Java client (kafka-clients) running transactions against the broker, for
// tests/compat/test_transactions_java.py:
//   java TxnClient <bootstrap> <topic-a> <topic-b> <transactional id> <group>
// 1. initTransactions; a transaction writing "c0".."c3" over partitions 0 and 1 of both
//    topics with the group's offsets (sendOffsetsToTransaction: offset 7 of topic-a/0),
//    committed; 2. one writing "a0", "a1", flushed, then aborted; 3. a transaction writing
//    "z0" left open while a second producer of the same id calls initTransactions (the
//    zombie is fenced: its commit fails); the second producer commits "n0"; 4. a
//    read_committed and a read_uncommitted KafkaConsumer read topic-a and topic-b to their
//    ends. Each step prints one line: "OK <what> ..." or "ERROR <exception class>".
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnClient {
    static KafkaProducer<String, String> producer(String bootstrap, String transactionalId) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("transactional.id", transactionalId);
        props.put("key.serializer", StringSerializer.class.getName());
        props.put("value.serializer", StringSerializer.class.getName());
        props.put("max.block.ms", "60000");
        KafkaProducer<String, String> p = new KafkaProducer<>(props);
        p.initTransactions();
        return p;
    }

    static void send(KafkaProducer<String, String> p, String topic, int partition, String value)
            throws Exception {
        p.send(new ProducerRecord<>(topic, partition, null, value)).get();
    }

    static List<String> read(String bootstrap, String isolation, List<String> topics) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", "java-reader-" + isolation + "-" + System.nanoTime());
        props.put("isolation.level", isolation);
        props.put("enable.auto.commit", "false");
        props.put("auto.offset.reset", "earliest");
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(props)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (String t : topics) {
                tps.add(new TopicPartition(t, 0));
                tps.add(new TopicPartition(t, 1));
            }
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> ends = c.endOffsets(tps);  // the LSO when read_committed
            long deadline = System.currentTimeMillis() + 60000;
            while (System.currentTimeMillis() < deadline) {
                boolean done = true;
                for (TopicPartition tp : tps) {
                    if (c.position(tp) < ends.get(tp)) done = false;
                }
                if (done) break;
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    values.add(r.topic() + "/" + r.partition() + "/" + r.value());
                }
            }
        }
        Collections.sort(values);
        return values;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topicA = args[1], topicB = args[2], id = args[3], group = args[4];
        KafkaProducer<String, String> first = producer(bootstrap, id);
        System.out.println("OK initialised");
        first.beginTransaction();
        send(first, topicA, 0, "c0");
        send(first, topicA, 1, "c1");
        send(first, topicB, 0, "c2");
        send(first, topicB, 1, "c3");
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        offsets.put(new TopicPartition(topicA, 0), new OffsetAndMetadata(7));
        first.sendOffsetsToTransaction(offsets, new ConsumerGroupMetadata(group));
        first.commitTransaction();
        System.out.println("OK committed");
        first.beginTransaction();
        send(first, topicA, 0, "a0");
        send(first, topicB, 1, "a1");
        first.abortTransaction();
        System.out.println("OK aborted");
        first.beginTransaction();
        send(first, topicA, 1, "z0");
        KafkaProducer<String, String> second = producer(bootstrap, id);  // fences the first
        try {
            first.commitTransaction();
            System.out.println("OK zombie-committed");
        } catch (Exception e) {
            System.out.println("ERROR " + e.getClass().getSimpleName());
        }
        first.close(Duration.ofSeconds(5));
        second.beginTransaction();
        send(second, topicB, 0, "n0");
        second.commitTransaction();
        second.close();
        System.out.println("OK successor-committed");
        List<String> topics = List.of(topicA, topicB);
        System.out.println("OK read_committed " + String.join(",", read(bootstrap, "read_committed", topics)));
        System.out.println("OK read_uncommitted " + String.join(",", read(bootstrap, "read_uncommitted", topics)));
    }
}
