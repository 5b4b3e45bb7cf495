// Vertex AI TensorFlow training, models and endpoints as components.
package vertextraining
