// Vertex AI TensorFlow training, capacity, models and endpoints as components.
package vertextraining
